#!/usr/bin/env python3
"""A wide-area network between ordering nodes, emulated on loopback for bench-wan.sh.

One TCP proxy per orderer, each listening where the network definition says that
orderer is and passing bytes (TLS and all) to where it really listens. A connection
dialled by another orderer of the network carries each read the delay later, each way
(so a round trip between two orderers takes twice the delay more); a connection dialled
by any other process (a peer, a client, a scraper) passes at once. The delay, in ms, is
what DELAY_FILE holds, read again every READ_AGAIN_S: a run changes it without starting
the network again. Who dialled is found from
the socket's owner (/proc/net/tcp and the orderers' descriptors; their pids from
UP_DIR/*/orderer*/runnel.pid, read when a connection arrives).

    wan-proxy.py DELAY_FILE UP_DIR LISTEN_PORT:TARGET_PORT...
"""
import asyncio
import glob
import os
import socket
import sys
import time

# Bytes read at once from a socket.
READ_BYTES = 64 << 10
# How often the delay file is read again, s.
READ_AGAIN_S = 0.2

# The one-way delay between orderers now, s.
delay_s = 0.0


async def follow(delay_file):
    global delay_s
    while True:
        try:
            delay_s = float(open(delay_file).read().strip() or 0) / 1000
        except (OSError, ValueError):
            pass
        await asyncio.sleep(READ_AGAIN_S)


def orderer_pids(up_dir):
    pids = set()
    for path in glob.glob(os.path.join(up_dir, "*", "orderer*", "runnel.pid")):
        try:
            pids.add(int(open(path).read().strip()))
        except (OSError, ValueError):
            pass
    return pids


def dialled_by_orderer(up_dir, port, listen):
    """Whether the socket with local port `port` connected to `listen` is an orderer's."""
    local, remote = f"0100007F:{port:04X}", f"0100007F:{listen:04X}"
    inode = None
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[2] == remote and fields[9] != "0":
                inode = fields[9]
                break
    if inode is None:
        return False
    link = f"socket:[{inode}]"
    for pid in orderer_pids(up_dir):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == link:
                    return True
        except OSError:
            continue
    return False


async def carry(reader, writer, delayed):
    """Copies reader to writer, each read written the delay after it was read if delayed."""
    queue = asyncio.Queue()

    async def write():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()

    writing = asyncio.create_task(write())
    try:
        while True:
            data = await reader.read(READ_BYTES)
            if not data:
                break
            queue.put_nowait((time.monotonic() + (delay_s if delayed else 0.0), data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await writing
        writer.close()
    except (ConnectionError, OSError):
        pass


def serve(listen, target, up_dir):
    async def connected(client_reader, client_writer):
        port = client_writer.get_extra_info("peername")[1]
        delayed = dialled_by_orderer(up_dir, port, listen)
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_writer.close()
            return
        for writer in (client_writer, server_writer):
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(
            carry(client_reader, server_writer, delayed),
            carry(server_reader, client_writer, delayed),
        )

    return asyncio.start_server(connected, "127.0.0.1", listen)


async def main():
    up_dir = sys.argv[2]
    servers = []
    for pair in sys.argv[3:]:
        listen, target = (int(p) for p in pair.split(":"))
        servers.append(await serve(listen, target, up_dir))
    await asyncio.gather(follow(sys.argv[1]), *(server.serve_forever() for server in servers))


if __name__ == "__main__":
    asyncio.run(main())
