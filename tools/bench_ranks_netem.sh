#!/usr/bin/env bash
# MPI ranks over TCP across a link with an added delay: what a cluster of small boxes on
# Ethernet would get. Two MPI ranks, rank 0 in this network namespace and rank 1 in a new one,
# joined by a veth pair with `tc qdisc ... netem delay` on both ends (DELAY_MS each way, default
# 1). Where the kernel has no sch_netem, the namespaces are joined instead by two TUN devices and
# tools/delay_link.py, which holds every packet DELAY_MS. Runs `mlstack-mpi bench` (Open MPI,
# TCP only: --mca btl tcp,self on the link's subnet) in gather mode, reduce mode and as 2
# pipeline stages, and prints prefill and decode tokens/s, the KiB rank 0 exchanged per token
# (in + out) and its share of time waiting. Everything it makes (namespace, devices, relay,
# files) is removed on exit. Needs root, ip, Open MPI's mpirun, and `make mpi`.
#
#   tools/bench_ranks_netem.sh [MODEL] [bench options...]     (default models/smollm2-135m-instruct)
#   DELAY_MS=0 tools/bench_ranks_netem.sh                      the same link without the delay
set -eu
cd "$(dirname "$0")/.."
model=${1:-models/smollm2-135m-instruct}
[ $# -gt 0 ] && shift
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(-p 64 -n 16 -r 3)
delay=${DELAY_MS:-1}
bin=$PWD/build/mlstack-mpi
[ -x "$bin" ] || { echo "$0: $bin missing (make mpi)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "$0: mpirun missing (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$0: needs root (network namespaces)" >&2; exit 2; }

ns=mlsnet$$ a=mls$$a b=mls$$b net=10.231.$(($$ % 250)) relay=""
tmp=$(mktemp -d)
cleanup() {
    set +e
    if [ -n "$relay" ]; then kill "$relay" 2>/dev/null; wait "$relay" 2>/dev/null; fi
    ip link del "$a" 2>/dev/null || true # a veth pair goes as a whole
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$ns"
ip netns exec "$ns" ip link set lo up
link=""
if ip link add "$a" type veth peer name "$b" && tc qdisc add dev "$a" root netem delay "${delay}ms" 2>/dev/null; then
    ip link set "$b" netns "$ns"
    ip netns exec "$ns" tc qdisc add dev "$b" root netem delay "${delay}ms"
    ip addr add "$net.1/24" dev "$a"
    ip link set "$a" up
    ip netns exec "$ns" ip addr add "$net.2/24" dev "$b"
    ip netns exec "$ns" ip link set "$b" up
    link="veth pair with tc netem delay ${delay}ms on each end"
else
    ip link del "$a" 2>/dev/null || true
    python3 tools/delay_link.py "$ns" "$delay" "$a" "$b" >"$tmp/relay" 2>&1 &
    relay=$!
    for _ in $(seq 1 100); do grep -q ready "$tmp/relay" && break; sleep 0.05; done
    grep -q ready "$tmp/relay" || { cat "$tmp/relay" >&2; exit 1; }
    ip addr add "$net.1" peer "$net.2" dev "$a"
    ip link set "$a" up
    ip netns exec "$ns" ip addr add "$net.2" peer "$net.1" dev "$b"
    ip netns exec "$ns" ip link set "$b" up
    link="no sch_netem in this kernel: TUN pair joined by tools/delay_link.py, ${delay}ms each way"
fi

# mpirun starts rank 0 here and rank 1's daemon through this "remote shell", in the namespace
cat >"$tmp/agent" <<EOF
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done # options a remote shell would take
shift                                         # the host: the namespace is the only other one
exec ip netns exec $ns /bin/sh -c "\$*"
EOF
chmod +x "$tmp/agent"
printf '%s slots=1\n%s slots=1\n' "$net.1" "$net.2" >"$tmp/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --hostfile "$tmp/hosts" --mca plm_rsh_agent "$tmp/agent" --mca btl tcp,self
    --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" --bind-to none -np 2)

echo "link: $link; model $model; bench ${opts[*]}; 2 MPI ranks of 1 thread"
printf '%-8s | %-6s | %10s | %11s | %6s\n' mode test "tokens/s" "KiB/token" wait
printf -- '---------|--------|------------|-------------|-------\n'
for mode in gather reduce stages; do
    extra=(--rank-mode gather)
    [ $mode = reduce ] && extra=(--rank-mode reduce)
    [ $mode = stages ] && extra=(--stages 2)
    if ! timeout 600 "${mpi[@]}" "$bin" bench -m "$model" -t 1 "${extra[@]}" "${opts[@]}" --json >"$tmp/out" 2>"$tmp/err"; then
        echo "$mode: mpirun failed:" >&2; tail -n 20 "$tmp/err" >&2; exit 1
    fi
    python3 - "$mode" "$tmp/out" <<'EOF'
import json, sys
for line in open(sys.argv[2]):
    if line.startswith("{"):
        r = json.loads(line)
        print("%-8s | %-6s | %10.2f | %11.1f | %5.1f%%" % (sys.argv[1], r["test"], r["tps_median"],
              r["exchanged_kib_per_token"], 100 * r["wait_fraction"]))
EOF
done
