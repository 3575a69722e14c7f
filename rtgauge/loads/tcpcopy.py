"""The TCP half of the interrupt study's load, run inside a network namespace:

    python3 tcpcopy.py send HOST PORT COUNTFILE
    python3 tcpcopy.py recv HOST PORT COUNTFILE

The study copied a TCP stream to a serial line while a flood ping ran. Here the
sender streams 64 KiB writes to the receiver as fast as TCP takes them; the receiver
copies every byte it gets into a pseudo-terminal (the kernel's tty layer, the serial
line's software path, with no baud-rate limit) and drains the other end. Both write
"bytes tty_bytes" to COUNTFILE every quarter second and when stopped, so the load
delivered is known. Self-contained (standard library only), run by path inside
`nsenter`."""

import os
import signal
import socket
import sys
import time
import tty

CHUNK = b"t" * 65536
stop = {"now": False}


def write_count(path: str, nbytes: int, tty_bytes: int) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(f"{nbytes} {tty_bytes}\n")
    os.replace(path + ".tmp", path)


def connect(host: str, port: int) -> socket.socket | None:
    while not stop["now"]:
        try:
            return socket.create_connection((host, port), timeout=0.5)
        except OSError:
            time.sleep(0.05)            # the receiver is not listening yet
    return None


def copy_to_tty(data: bytes, slave: int, master: int) -> int:
    """Write data through the pty (slave -> master), draining the master as it fills."""
    done = 0
    view = memoryview(data)
    while done < len(view) and not stop["now"]:
        try:
            done += os.write(slave, view[done:done + 1024])
        except BlockingIOError:
            pass
        try:
            while os.read(master, 65536):
                pass
        except BlockingIOError:
            pass
    return done


def main() -> int:
    role, host, port, countfile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    signal.signal(signal.SIGINT, lambda s, f: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda s, f: stop.update(now=True))
    nbytes = tty_bytes = 0
    next_write = time.monotonic() + 0.25
    if role == "send":
        conn = connect(host, port)
    else:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, port))
        server.listen(1)
        server.settimeout(0.25)
        conn = None
        while conn is None and not stop["now"]:
            try:
                conn, _ = server.accept()
            except socket.timeout:
                pass
        master, slave = os.openpty()
        tty.setraw(slave)
        os.set_blocking(master, False)
        os.set_blocking(slave, False)
    if conn is not None:
        conn.settimeout(0.25)
    while conn is not None and not stop["now"]:
        try:
            if role == "send":
                nbytes += conn.send(CHUNK)
            else:
                data = conn.recv(65536)
                if not data:
                    break
                nbytes += len(data)
                tty_bytes += copy_to_tty(data, slave, master)
        except socket.timeout:
            pass
        except OSError:
            break
        if time.monotonic() >= next_write:
            write_count(countfile, nbytes, tty_bytes)
            next_write = time.monotonic() + 0.25
    write_count(countfile, nbytes, tty_bytes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
