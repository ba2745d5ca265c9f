# Sourced by the tests that run the public Azure code trace: skips (77) the
# whole test when GOVD_SHARED_DATA does not hold it, and gives $out, a
# temporary folder removed on exit.
if [ ! -f "${GOVD_SHARED_DATA:-/nonexistent}/AzureLLMInferenceTrace2023_code.csv" ]; then
	echo "SKIP: Azure code trace not found in GOVD_SHARED_DATA"
	exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
