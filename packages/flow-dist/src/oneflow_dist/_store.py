"""The rendezvous of a multi-node job: a tiny TCP key-value store that node 0's launcher serves at
MASTER_ADDR:MASTER_PORT. It carries no tensor data: the ranks exchange MPI port names through it to join their
nodes' MPI worlds into one (``_world``), and the launchers watch each other through it, so that a failure on one
node stops every node.

Protocol: one JSON object per line. ``{"op": "set", "key", "value"}``; ``{"op": "get", "key", "timeout"}``
answers ``{"value"}`` once the key is set (it waits), or ``{"timeout": true}``; ``{"op": "watch", "node"}``
keeps the connection open: the server sends ``{"abort": code, "rank": r}`` to every watcher when one reports
``{"op": "fail", "code", "rank"}``, and a watcher that disconnects without reporting success is taken as failed."""
import json
import socket
import socketserver
import threading
import time


class StoreServer:
    """Serves the store on ``(addr, port)`` from a daemon thread; ``OSError`` if the port is taken."""

    def __init__(self, addr, port):
        self._data = {}
        self._cond = threading.Condition()
        self._watchers = []
        self.aborted = None  # (code, rank) once some node failed
        server = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                server._serve(self.rfile, self.wfile)

        class TCP(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._tcp = TCP((addr, port), Handler)
        threading.Thread(target=self._tcp.serve_forever, daemon=True).start()

    def _serve(self, rfile, wfile):
        watching = False
        done = False
        for line in rfile:
            msg = json.loads(line)
            op = msg["op"]
            if op == "set":
                with self._cond:
                    self._data[msg["key"]] = msg["value"]
                    self._cond.notify_all()
            elif op == "get":
                deadline = time.monotonic() + msg.get("timeout", 300.0)
                with self._cond:
                    while msg["key"] not in self._data and time.monotonic() < deadline:
                        self._cond.wait(max(0.0, deadline - time.monotonic()))
                    value = self._data.get(msg["key"])
                _send(wfile, {"value": value} if value is not None else {"timeout": True})
            elif op == "watch":
                watching = True
                with self._cond:
                    self._watchers.append(wfile)
                    if self.aborted:
                        _send(wfile, {"abort": self.aborted[0], "rank": self.aborted[1]})
            elif op == "fail":
                self.abort(msg["code"], msg["rank"])
            elif op == "done":
                done = True
        if watching and not done:  # a launcher vanished: its node's ranks are gone
            self.abort(1, None)

    def abort(self, code, rank):
        """Tells every watching launcher to stop its ranks (the first failure wins)."""
        with self._cond:
            if self.aborted is None:
                self.aborted = (code, rank)
            watchers = list(self._watchers)
        for w in watchers:
            try:
                _send(w, {"abort": self.aborted[0], "rank": self.aborted[1]})
            except OSError:
                pass

    def close(self):
        self._tcp.shutdown()
        self._tcp.server_close()


def _send(wfile, msg):
    wfile.write((json.dumps(msg) + "\n").encode())
    wfile.flush()


class StoreClient:
    """One connection to the store; ``timeout``: how long to keep retrying the first connection (seconds)."""

    def __init__(self, addr, port, timeout=300.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._sock = socket.create_connection((addr, port), timeout=10)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no rendezvous at {addr}:{port} after {timeout:.0f} s (is the launcher of "
                                       f"node 0 running with the same --master-addr/--master-port?)") from None
                time.sleep(0.2)
        self._sock.settimeout(None)
        self._r = self._sock.makefile("rb")
        self._w = self._sock.makefile("wb")

    def send(self, **msg):
        _send(self._w, msg)

    def set(self, key, value):
        self.send(op="set", key=key, value=value)

    def get(self, key, timeout=300.0):
        """The value of ``key``, waiting up to ``timeout`` seconds for it to be set (TimeoutError after)."""
        self.send(op="get", key=key, timeout=timeout)
        answer = json.loads(self._r.readline())
        if "timeout" in answer:
            raise TimeoutError(f"rendezvous: {key!r} was not set within {timeout:.0f} s")
        return answer["value"]

    def readline(self):
        """The next message from the server (blocking), or None when the connection closed."""
        line = self._r.readline()
        return json.loads(line) if line else None

    def close(self):
        try:  # wakes a thread blocked in readline (closing its file first would wait for that thread's lock)
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        for f in (self._w, self._r, self._sock):
            try:
                f.close()
            except OSError:
                pass


class NodeWatch:
    """A launcher's watch on the other nodes: ``aborted`` becomes ``(code, rank)`` when another node failed (or
    node 0's launcher went away); :meth:`report_failure` tells the others that this node failed."""

    def __init__(self, addr, port, node_rank):
        self.aborted = None
        self._finished = False
        self._client = StoreClient(addr, port)
        self._client.send(op="watch", node=node_rank)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                msg = self._client.readline()
            except (OSError, ValueError):
                msg = None
            if msg is None:
                if not self._finished and self.aborted is None:
                    self.aborted = (1, None)
                return
            if "abort" in msg and self.aborted is None:
                self.aborted = (msg["abort"], msg["rank"])

    def report_failure(self, code, rank):
        try:
            self._client.send(op="fail", code=code, rank=rank)
        except OSError:
            pass

    def finish(self, code):
        self._finished = True
        try:
            self._client.send(op="done") if code == 0 else self.report_failure(code, None)
        except OSError:
            pass
        self._client.close()
