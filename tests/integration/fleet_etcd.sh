#!/usr/bin/env bash
# Fleet budgets against a real 3-member etcd cluster on loopback (free
# ports, temporary data dirs), started and stopped here, with three govd
# nodes on the sim backend (docs/fleet.md):
#  - a budget change (down, then up) converges within CONVERGE_PERIODS
#    allocator periods;
#  - `govctl fleet allocate` (started first) allocates as a service; paused
#    past its lease it is deposed: after it resumes its
#    writes fail the leader compare and the grants' epoch never goes back;
#  - the leader key deleted under a live allocator: its next write fails
#    the leader compare, another election follows;
#  - killing the allocator's govd hands allocation to another within the
#    lease TTL (+ a few periods) and the dead node's grant is freed;
#  - losing quorum moves every node to its safe budget (logged), and back
#    to a grant once quorum returns (logged);
#  - at every sample (100 ms) the written grants sum to no more than the
#    budget they were computed for, nor than the budget in force for more
#    than CONVERGE_PERIODS after a decrease.
# $1: the build directory. Exit 77 (skip) when etcd or govd is missing.
set -euo pipefail
build=${1:?usage: fleet_etcd.sh BUILD_DIR}
govd=$build/govd
govctl=${GOVCTL:-$build/govctl}
[ -x "$govd" ] || { echo "skip: $govd not built"; exit 77; }
command -v etcd >/dev/null || { echo "skip: etcd not installed (tools/install-deps: etcd-server)"; exit 77; }
py=/usr/bin/python3
PERIOD_MS=200
TTL_S=2
CONVERGE_PERIODS=25 # 5 s at 200 ms: the target the measured times are printed against
# Every wait below is written at its target and fails at WAIT_SCALE times it:
# the test asserts that the group gets there, not how fast on a loaded CI
# machine (with a second test suite beside it, a convergence after an election
# once took longer than 5 s).
# The times are measured and printed; docs/fleet.md reports them.
WAIT_SCALE=3
. "$(dirname "$0")/lib/etcd_cluster.sh"

etcd_ports 0
for i in 0 1 2; do start_etcd $i; done
wait_for "etcd cluster health" 150 healthy

cp policies/thermal-conservative.yaml "$tmp/p.yaml"
GRANT_TTL_MS=1200
# node PRIO ALLOCATOR
start_node() {
	local n=$1 prio=$2 alloc=$3
	node_yaml "$n" rack1 "$prio" "$alloc" "$endpoints" ${#n} >"$tmp/$n.yaml"
	"$govd" --config "$tmp/$n.yaml" 2>"$tmp/$n.err" &
	pids+=($!)
	eval "pid_$n=$!"
}
status() { "$govctl" fleet status --json --endpoints "$endpoints" --cluster ci --group rack1 --timeout-ms 500; }
# the allocator as a service first, so it wins the first election
"$govctl" fleet allocate --endpoints "$endpoints" --cluster ci --group rack1 --id svc \
	--period-ms $PERIOD_MS --ttl-s $TTL_S --timeout-ms 300 2>"$tmp/svc.err" &
pids+=($!)
pid_svc=$!
svc_first() { grep -q "svc is the allocator" "$tmp/svc.err"; }
wait_for "govctl fleet allocate elected" 100 svc_first
start_node n1 1 true
start_node n2 0 true
start_node n3 0 true

# the sampler: one line of JSON per 100 ms (failed reads are skipped)
( while :; do s=$(status 2>/dev/null) && echo "$(date +%s.%N) $s"; sleep 0.1; done ) >"$tmp/samples" &
sampler=$!

# J: a field of the newest status, by a python expression over `s`
q() { status | $py -c "import json,sys; s=json.load(sys.stdin); print($1)"; }
registered() { [ "$(q 'len(s["nodes"])')" = 3 ]; }
wait_for "three registered nodes" 100 registered
floors=$(q 'sum(n["floor_w"] for n in s["nodes"])')
maxes=$(q 'sum(n["max_w"] for n in s["nodes"])')
echo "floors ${floors} W, maxima ${maxes} W"

# Converged on budget B: grants of that budget, none rising, every node
# granted, and the nodes applying their grants.
converged() {
	q "int(s['budget_w'] == $1 and s['grants_sum_w'] is not None and s['pending'] == 0
	    and all(n['grant_w'] is not None and n['state'] == 'grant' and
	            abs(n['applied_w'] - n['grant_w']) < 0.01 for n in s['nodes'])
	    and s['grants_sum_w'] <= $1 + 1e-6)" | grep -qx 1
}
# Budget changes: each converges (target CONVERGE_PERIODS); the time is printed.
change_budget() {
	local b=$1 t0 t1
	"$govctl" fleet set-budget "$b" --endpoints "$endpoints" --cluster ci --group rack1 >/dev/null
	t0=$(date +%s%N)
	wait_for "convergence on $b W" $((CONVERGE_PERIODS * PERIOD_MS / 100)) converged "$b"
	t1=$(date +%s%N)
	echo "budget $b W: converged in $(( (t1 - t0) / 1000000 )) ms (target $((CONVERGE_PERIODS * PERIOD_MS)) ms)"
	echo "$b $(( (t1 - t0) / 1000000 ))" >>"$tmp/converge"
}
b_hi=$($py -c "print(round($floors + 0.7 * ($maxes - $floors)))")
b_lo=$($py -c "print(round($floors + 0.2 * ($maxes - $floors)))")
b_mid=$($py -c "print(round($floors + 0.45 * ($maxes - $floors)))")
change_budget "$b_hi"
change_budget "$b_lo"
change_budget "$b_mid"
# the high-priority node is served first at the low budget: not below the others
q "s['nodes'][0]['node']" | grep -qx n1 || fail "status not sorted by node"

# A deposed allocator cannot write: pause the allocator's govd past its
# lease, let another take over, resume it; its next grants txn fails the
# leader compare (logged) and the grants stay the new allocator's.
paused=$(q 's["allocator"]')
[ "$paused" = svc ] || fail "allocator '$paused', not govctl fleet allocate (svc)"
eval "pp=\$pid_$paused"
kill -STOP "$pp"
other() { l=$(q 's["allocator"]' 2>/dev/null) && [ -n "$l" ] && [ "$l" != None ] && [ "$l" != "$paused" ]; }
wait_for "an allocator other than the paused $paused" $(( (TTL_S * 1000 + 4 * PERIOD_MS) / 100 + 10 )) other
epoch_new=$(q 's["epoch"]')
kill -CONT "$pp"
deposed() { grep -q "no longer allocating" "$tmp/$paused.err"; }
# the deposed service keeps campaigning; it must not lead at once: stop it
# after it noticed, so the failover below is between govd nodes
wait_for "$paused to find itself deposed" 50 deposed
sleep 1
[ "$(q 's["epoch"]')" -ge "$epoch_new" ] || fail "grants went back to the deposed allocator's epoch"
[ "$(q 's["allocator"]')" != "$paused" ] || fail "the deposed allocator leads again at once"
wait_for "convergence after the deposition" $((CONVERGE_PERIODS * PERIOD_MS / 100)) converged "$b_mid"
echo "deposed allocator $paused wrote nothing (grants epoch $(q 's["epoch"]'))"
kill -TERM "$pid_svc"
set +e; wait "$pid_svc"; rc=$?; set -e
[ "$rc" = 0 ] || fail "govctl fleet allocate exited $rc after SIGTERM"
grep -q "svc stopped" "$tmp/svc.err" || fail "govctl fleet allocate: no stop logged"

# The leader key deleted under a live allocator (its lease still valid):
# its next grants txn fails the create_revision compare; someone leads again.
cur=$(q 's["allocator"]')
case $cur in n1|n2|n3) ;; *) fail "allocator '$cur' is not a node" ;; esac
ETCDCTL_API=3 etcdctl --endpoints "$endpoints" del /govd/ci/rack1/leader >/dev/null
not_own() { grep -q "no longer allocating (the leader key is no longer its own)" "$tmp/$cur.err"; }
wait_for "$cur to find the leader key gone" 50 not_own
someone() { l=$(q 's["allocator"]' 2>/dev/null) && [ -n "$l" ] && [ "$l" != None ]; }
wait_for "a leader again" 50 someone
t0=$(date +%s%N)
wait_for "convergence after the new election" $((CONVERGE_PERIODS * PERIOD_MS / 100)) converged "$b_mid"
t1=$(date +%s%N)
echo "leader key deleted under $cur: its write refused, $(q 's["allocator"]') allocates; converged in $(( (t1 - t0) / 1000000 )) ms (target $((CONVERGE_PERIODS * PERIOD_MS)) ms)"

# Allocator failover: kill -9 its govd.
leader=$(q 's["allocator"]')
echo "allocator: $leader"
case $leader in n1|n2|n3) ;; *) fail "allocator '$leader' is not a node" ;; esac
eval "victim=\$pid_$leader"
t0=$(date +%s%N)
kill -9 "$victim"
new_leader() { l=$(q 's["allocator"]' 2>/dev/null) && [ -n "$l" ] && [ "$l" != None ] && [ "$l" != "$leader" ]; }
wait_for "a new allocator" $(( (TTL_S * 1000 + 4 * PERIOD_MS + 1000) / 100 )) new_leader
t1=$(date +%s%N)
handover_ms=$(( (t1 - t0) / 1000000 ))
echo "allocation handed to $(q 's["allocator"]') in $handover_ms ms (lease TTL ${TTL_S} s; target $(( TTL_S * 1000 + 4 * PERIOD_MS + 1000 )) ms)"
# the dead node's record expires with its lease and its grant is freed
freed() { q "int('$leader' not in [n['node'] for n in s['nodes']] and s['pending'] == 0)" | grep -qx 1; }
wait_for "the dead node's grant freed" 60 freed
got_more() { q "int(s['grants_sum_w'] > 0 and len(s['nodes']) == 2 and all(n['grant_w'] is not None for n in s['nodes']))" | grep -qx 1; }
wait_for "grants to the two survivors" 50 got_more
echo "dead node's grant freed; survivors: $(q '[(n["node"], n["grant_w"]) for n in s["nodes"]]')"

# Losing quorum: stop two of three members; every survivor goes to its safe budget.
# (who leads before the stop: the open question in docs/fleet.md)
echo "etcd before the stop: $(ETCDCTL_API=3 etcdctl --endpoints "$endpoints" --command-timeout=1s \
	endpoint status 2>/dev/null | awk -F', ' '{printf "%s leader=%s term=%s index=%s; ", $1, $5, $7, $8}' || true)"
echo "stopping e1 (pid ${etcd_pids[1]}) and e2 (pid ${etcd_pids[2]}); e0 is pid ${etcd_pids[0]}"
kill -STOP "${etcd_pids[1]}" "${etcd_pids[2]}"
# One scrape per node: in safe mode, and its budget <= 250 W and <= its last
# grant in that same scrape (a grant committed just before the members
# stopped but read late is fresh for grant_ttl_ms, so a node may go safe,
# back to that grant, then safe for good: the wait allows it).
safe_ok() {
	curl -s "http://$(metrics_of "$1")/metrics" | $py -c "
import sys
m = {}
for l in sys.stdin:
    if l.startswith('govd_fleet_') and not l.startswith('#'):
        k, v = l.rsplit(' ', 1); m[k] = float(v)
b, g = m['govd_fleet_budget_watts'], m['govd_fleet_grant_watts']
ok = m.get('govd_fleet_mode{mode=\"safe\"}') == 1 and b <= 250 and b <= g + 1e-9
if len(sys.argv) > 1:
    print(sys.argv[1] + (': safe budget' if ok else ': NOT SAFE: budget'), b, 'W, last grant', g, 'W',
          '' if ok else {k: v for k, v in m.items() if 'mode' in k or 'etcd' in k or 'fresh' in k})
sys.exit(0 if ok else 1)" "$@"
}
on_safe() {
	local n
	for n in n1 n2 n3; do
		[ "$n" = "$leader" ] && continue
		safe_ok "$n" || return 1
	done
}
wait_for "safe budgets (<= 250 W, <= the last grant) without quorum" 60 on_safe
for n in n1 n2 n3; do
	[ "$n" = "$leader" ] && continue
	grep -q "on its safe budget" "$tmp/$n.err" || fail "$n: fallback not logged"
	# About once in ten runs a node is granted again here: a grant written
	# just before the stop (the raft index does not move after it) reached
	# the node late, through a read the one running member still answered,
	# and a grant seen to change is fresh for grant_ttl_ms from when it is
	# seen. Bounded: the node must be back on its safe budget within that.
	if ! safe_ok "$n" "$n"; then
		echo "$n: a grant written before the stop, seen late: fresh for grant_ttl_ms"
		wait_for "$n back on its safe budget within grant_ttl_ms" $(( (1200 + 2 * PERIOD_MS) / 100 )) safe_ok "$n"
		safe_ok "$n" "$n" || fail "$n: left its safe budget without quorum"
	fi
done
kill -CONT "${etcd_pids[1]}" "${etcd_pids[2]}"
wait_for "etcd quorum back" 150 healthy
recovered() { for n in n1 n2 n3; do [ "$n" = "$leader" ] && continue; grep -q "recovered" "$tmp/$n.err" || return 1; done; }
wait_for "recovery logged" 100 recovered
wait_for "convergence after quorum" $((CONVERGE_PERIODS * PERIOD_MS / 100)) converged "$b_mid"

# every sample: grants within the budget they were computed for, and
# within the budget in force except just after a decrease
kill "$sampler" 2>/dev/null || true
sampler=
$py - "$tmp/samples" "$((CONVERGE_PERIODS * PERIOD_MS))" <<'PY' || fail "budget exceeded in a sample"
import json, sys
rows = []
for line in open(sys.argv[1]):
    t, _, js = line.partition(" ")
    try:
        rows.append((float(t), json.loads(js)))
    except ValueError:
        continue  # cut off by the sampler's kill
grace = int(sys.argv[2]) / 1000.0
assert len(rows) >= 20, f"only {len(rows)} samples"
last_drop = -1e9
last_epoch = 0
prev_budget = None
bad = 0
for t, s in rows:
    b, g, gb = s["budget_w"], s["grants_sum_w"], s.get("grants_budget_w")
    if prev_budget is not None and b is not None and b < prev_budget:
        last_drop = t
    prev_budget = b
    if g is None:
        continue
    if s["epoch"] < last_epoch:
        print(f"t={t}: grants of epoch {s['epoch']} after epoch {last_epoch}"); bad += 1
    last_epoch = s["epoch"]
    if gb is not None and g > gb + 1e-6:
        print(f"t={t}: grants {g} W > their budget {gb} W"); bad += 1
    if b is not None and g > b + 1e-6 and t - last_drop > grace:
        print(f"t={t}: grants {g} W > budget {b} W"); bad += 1
print(f"{len(rows)} samples, {bad} over budget")
sys.exit(1 if bad else 0)
PY
# SIGTERM: govd revokes its lease on the way out, so its record goes at
# once (well before the TTL), and it exits 0 (ASan builds: no report)
for n in n1 n2 n3; do
	[ "$n" = "$leader" ] && continue
	eval "p=\$pid_$n"
	kill -TERM "$p"
	set +e; wait "$p"; rc=$?; set -e
	[ "$rc" = 0 ] || fail "$n exited $rc after SIGTERM"
	! grep -q "Sanitizer" "$tmp/$n.err" || fail "$n: sanitizer report"
	break
done
gone() { q "int('$n' not in [x['node'] for x in s['nodes']])" | grep -qx 1; }
wait_for "$n's record revoked" 5 gone
echo "fleet_etcd: ok"
