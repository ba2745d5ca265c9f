#!/usr/bin/env python3
"""A TCP proxy the test controls, to partition one node from etcd.

usage: tcp_partition.py LISTEN_PORT TARGET_HOST:TARGET_PORT

Forwards every connection to the target. SIGUSR1 cuts: open connections
are dropped and new ones are accepted but never forwarded nor answered (a
black hole, as a dead link looks: the client's requests time out). SIGUSR2
heals. Prints "listening" once it accepts."""
import asyncio
import signal
import sys

cut = False
conns = set()


async def pipe(r, w):
    try:
        while True:
            b = await r.read(65536)
            if not b or cut:
                break
            w.write(b)
            await w.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        w.close()


async def handle(cr, cw, host, port):
    if cut:
        conns.add(cw)  # held open, never answered
        return
    try:
        tr, tw = await asyncio.open_connection(host, port)
    except OSError:
        cw.close()
        return
    conns.add(cw)
    conns.add(tw)
    await asyncio.gather(pipe(cr, tw), pipe(tr, cw))
    conns.discard(cw)
    conns.discard(tw)


def on_cut():
    global cut
    cut = True
    for w in list(conns):
        w.transport.abort()
    conns.clear()


def on_heal():
    global cut
    cut = False
    for w in list(conns):
        w.transport.abort()
    conns.clear()


async def main():
    lport = int(sys.argv[1])
    host, port = sys.argv[2].rsplit(":", 1)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, on_cut)
    loop.add_signal_handler(signal.SIGUSR2, on_heal)
    srv = await asyncio.start_server(lambda r, w: handle(r, w, host, int(port)), "127.0.0.1", lport)
    print("listening", flush=True)
    async with srv:
        await srv.serve_forever()


asyncio.run(main())
