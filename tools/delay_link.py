#!/usr/bin/env python3
"""A point-to-point IP link with a fixed one-way delay, for kernels without sch_netem.

    delay_link.py NETNS DELAY_MS DEV_HERE DEV_THERE

Makes TUN device DEV_HERE in this process's network namespace and DEV_THERE in NETNS (a name
under /var/run/netns, as `ip netns add` makes), prints "ready", then moves every IP packet one
device reads to the other after DELAY_MS milliseconds, in arrival order, until it is killed
(the devices go with it). Needs root. tools/bench_ranks_netem.sh uses it when `tc qdisc ...
netem` is not available; the kernel hands a TUN device whole packets of at most its MTU, so
nothing needs segmenting here.
"""
import ctypes
import fcntl
import heapq
import os
import select
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
CLONE_NEWNET = 0x40000000


def tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    ns, delay, here, there = sys.argv[1], float(sys.argv[2]) / 1000.0, sys.argv[3], sys.argv[4]
    a = tun(here)
    libc = ctypes.CDLL(None, use_errno=True)
    nsfd = os.open(os.path.join("/var/run/netns", ns), os.O_RDONLY)
    if libc.setns(nsfd, CLONE_NEWNET) != 0:  # this thread now lives in NETNS; a stays where it was made
        sys.exit("delay_link: setns %s: %s" % (ns, os.strerror(ctypes.get_errno())))
    b = tun(there)
    print("ready", flush=True)
    peer = {a: b, b: a}
    queue, n = [], 0  # (due, arrival number, device to write, packet)
    while True:
        timeout = max(0.0, queue[0][0] - time.monotonic()) if queue else None
        readable, _, _ = select.select([a, b], [], [], timeout)
        for fd in readable:
            while True:
                try:
                    pkt = os.read(fd, 65536)
                except BlockingIOError:
                    break
                heapq.heappush(queue, (time.monotonic() + delay, n, peer[fd], pkt))
                n += 1
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, fd, pkt = heapq.heappop(queue)
            try:
                os.write(fd, pkt)
            except OSError:
                pass  # a full queue drops the packet, as a link would; TCP resends it


if __name__ == "__main__":
    main()
