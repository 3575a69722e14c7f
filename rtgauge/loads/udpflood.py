"""A UDP sender or sink for the net load between two network namespaces:

    python3 udpflood.py send HOST PORT COUNTFILE
    python3 udpflood.py recv HOST PORT COUNTFILE

The sender sends 1200-byte datagrams as fast as the stack takes them; both write
their packet and byte counts to COUNTFILE every quarter second and when stopped, so
the load delivered is known. Self-contained, run by path inside `nsenter`."""

import os
import signal
import socket
import sys
import time

PAYLOAD = b"r" * 1200
stop = {"now": False}


def write_count(path: str, packets: int, nbytes: int) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(f"{packets} {nbytes}\n")
    os.replace(path + ".tmp", path)


def main() -> int:
    role, host, port, countfile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    signal.signal(signal.SIGINT, lambda s, f: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda s, f: stop.update(now=True))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    packets = nbytes = 0
    next_write = time.monotonic() + 0.25
    if role == "recv":
        sock.bind((host, port))
        sock.settimeout(0.25)
    while not stop["now"]:
        try:
            if role == "send":
                nbytes += sock.sendto(PAYLOAD, (host, port))
            else:
                nbytes += len(sock.recv(65536))
            packets += 1
        except socket.timeout:
            pass
        except OSError:
            time.sleep(0.001)       # no route yet, or the buffer is full
        if packets % 256 == 0 and time.monotonic() >= next_write:
            write_count(countfile, packets, nbytes)
            next_write = time.monotonic() + 0.25
    write_count(countfile, packets, nbytes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
