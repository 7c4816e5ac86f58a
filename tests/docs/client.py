"""`assetbus ...` in the guides' shell: hand argv, environment, cwd and stdio to the warm CLI (stdlib only).

See warm_cli.py. Run as `python -S client.py ARGS...`; exits with the command's exit code.
"""

import json
import os
import signal
import socket
import sys


def main() -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(os.environ["ASSETBUS_DOCS_CLI_SOCKET"])
    request = {"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    pid = int(conn.recv(64))

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    answer = conn.recv(64)
    return int(answer) if answer else 1


if __name__ == "__main__":
    sys.exit(main())
