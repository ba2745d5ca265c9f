#!/usr/bin/env bash
# The command-line surface against govctl's subcommand table (govctl
# --list-commands): every command's --help exits 0 with its usage, appears in
# man/govctl.1's COMMANDS and is offered by completions/govctl; a mistyped
# command gets the nearest one suggested; --version of both binaries; every
# man page renders without a warning (man --warnings); govd's completion.
# $1: the build directory.
set -euo pipefail
build=${1:?usage: install_cli.sh BUILD_DIR}
govctl=$build/govctl
govd=$build/govd
[ -x "$govctl" ] && [ -x "$govd" ] || { echo "skip: govctl/govd not built"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
version=$(sed -n 's/^project(govd VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)

[ "$("$govctl" --version)" = "govctl $version" ] || fail "govctl --version: $("$govctl" --version)"
[ "$("$govd" --version)" = "govd $version" ] || fail "govd --version: $("$govd" --version)"
"$govd" --help | grep -q '^usage: govd --config' || fail "govd --help"
"$govctl" --help | grep -q '^usage: govctl COMMAND' || fail "govctl --help"

mapfile -t cmds < <("$govctl" --list-commands)
[ "${#cmds[@]}" -ge 10 ] || fail "govctl --list-commands lists ${#cmds[@]} commands"
# The COMMANDS section of the man page (up to the next .SH).
man_cmds=$(sed -n '/^\.SH COMMANDS/,/^\.SH [A-Z]/p' man/govctl.1)
for c in "${cmds[@]}"; do
	out=$("$govctl" "$c" --help) || fail "govctl $c --help exits $?"
	grep -q "^usage: govctl $c" <<<"$out" || fail "govctl $c --help does not print its usage: $out"
	grep -qE "^\.B $(sed 's/-/\\\\-/g' <<<"$c")( |$)" <<<"$man_cmds" ||
		fail "man/govctl.1 COMMANDS has no entry for '$c' (a '.B $c ...' line)"
	"$govctl" help "$c" | grep -q "^usage: govctl $c" || fail "govctl help $c"
done
grep -qE '^\.B -?-?\\-\\-version|^\.BR \\-\\-version' man/govctl.1 || fail "man/govctl.1 does not document --version"

# The format pages name every top-level key their loader accepts.
c_keys() { sed -n "/$2\[\] = {/,/};/p" "$1" | grep -o '"[a-z_]*"' | tr -d '"'; }
for k in $(c_keys governor/daemon/config.c root_keys); do
	grep -qF "\fB$k" man/govd.yaml.5 || fail "man/govd.yaml.5 does not describe config key '$k'"
done
for k in $(c_keys governor/policy/policy.c root_keys); do
	grep -qE "^\.SS .*\b$k\b|\\fB$k\b" man/govd-policy.5 || fail "man/govd-policy.5 does not describe policy key '$k'"
done

# Mistyped commands (and govd options): the nearest one is suggested, exit 2; junk gets none.
set +e
err=$("$govctl" stauts 2>&1); rc=$?
set -e
[ $rc -eq 2 ] || fail "govctl stauts exits $rc, want 2"
grep -q "did you mean 'status'" <<<"$err" || fail "govctl stauts: no suggestion: $err"
err=$("$govctl" comapre 2>&1) || true
grep -q "did you mean 'compare'" <<<"$err" || fail "govctl comapre: no suggestion: $err"
set +e
err=$("$govd" --dryrun 2>&1); rc=$?
set -e
[ $rc -eq 2 ] && grep -q "did you mean '--dry-run'" <<<"$err" || fail "govd --dryrun: exit $rc, $err"
err=$("$govctl" zzzzzzzz 2>&1) || true
if grep -q "did you mean" <<<"$err"; then fail "govctl zzzzzzzz: suggested something: $err"; fi

# Man pages: each renders with no warning from groff.
if command -v man >/dev/null; then
	for m in man/*.[1-8]; do
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
		[ -z "$w" ] || fail "$m: man --warnings: $w"
	done
	# Each page is reachable from the others (SEE ALSO names all four).
	for m in govd.8 govctl.1 govd.yaml.5 govd-policy.5; do
		[ -f "man/$m" ] || fail "man/$m missing"
	done
else
	echo "note: man not installed, pages not rendered"
fi

# Completion, through bash-completion itself (tools/install-deps installs it).
bc=/usr/share/bash-completion/bash_completion
[ -f "$bc" ] || { echo "skip: bash-completion not installed ($bc)"; exit 77; }
complete_words() { # the COMPREPLY for a command line, the last word being completed
	PATH="$build:$PATH" bash -c '
		source '"$bc"'
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		"$(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/")" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$@"
}
got=$(complete_words completions/govctl govctl "")
for c in "${cmds[@]}"; do
	grep -qx "$c" <<<"$got" || fail "completions/govctl does not offer '$c' (got: $(tr '\n' ' ' <<<"$got"))"
done
complete_words completions/govctl govctl st | grep -qx status || fail "govctl st<TAB> does not give status"
complete_words completions/govctl govctl compare --sc | grep -qx -- --scenarios ||
	fail "govctl compare --sc<TAB> does not give --scenarios"
complete_words completions/govctl govctl status --j | grep -qx -- --json || fail "govctl status --j<TAB>"
complete_words completions/govd govd --log-level d | grep -qx debug || fail "govd --log-level d<TAB>"
complete_words completions/govd govd --dr | grep -qx -- --dry-run || fail "govd --dr<TAB>"
echo "install_cli: ok (${#cmds[@]} commands)"
