# Sourced by the metrics tests: promlint FILE runs `promtool check metrics` on
# an exposition and prints every problem but one: govd_device_info carries
# dcgm-exporter's own label names (UUID, modelName, Hostname), which the
# linter calls camelCase; they are kept so `on(UUID)` joins the two
# exporters. Returns 1 when anything else is reported (parse errors too).
promlint() {
	local out
	out=$("${PROMTOOL:-promtool}" check metrics <"$1" 2>&1 || true)
	out=$(printf '%s\n' "$out" |
		grep -v "^govd_device_info label names should be written in 'snake_case' not 'camelCase'$" |
		grep -v '^$' || true)
	[ -z "$out" ] && return 0
	printf '%s\n' "$out"
	return 1
}
