#!/usr/bin/env python3
# Holds 100 slow clients against a running `crab serve` (the example
# configuration's keys): each sends its headers, then one body byte every
# 5 s, half of them without an API key. Meanwhile a good client asks once.
# Then 100 more connect and the server is sent SIGTERM; the script reports
# how long it took to exit.
#   crab sim-server --listen 127.0.0.1:8081 --time-scale 0.1 --seed 42 &
#   crab serve --config examples/serve/crab-serve.yaml &
#   scripts/slow-clients.py 8080 $!
import json, os, signal, socket, sys, threading, time, urllib.request
from collections import Counter
port = int(sys.argv[1]); serve_pid = int(sys.argv[2])
body = json.dumps({"model": "auto", "messages": [{"role": "user", "content": "I was charged twice for my March invoice, please refund the duplicate payment."}]}).encode()
results = []
lock = threading.Lock()
def slow(i):
    key = "Authorization: Bearer sk-crab-acme-agent\r\n" if i % 2 == 0 else ""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{key}Content-Length: {len(body)}\r\n\r\n".encode())
    start = time.time(); s.settimeout(5); status = None; n = 0
    while status is None and time.time() - start < 60:
        try:
            data = s.recv(64)
            status = data.split(b" ")[1].decode() if data else "closed"
        except socket.timeout:
            try:
                s.sendall(body[n:n+1]); n += 1
            except OSError:
                status = "closed"
    with lock:
        results.append((bool(key), status, round(time.time() - start, 1)))
threads = [threading.Thread(target=slow, args=(i,)) for i in range(100)]
for t in threads: t.start()
time.sleep(1)
t0 = time.time()
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body, headers={"Authorization": "Bearer sk-crab-globex-admin"})
with urllib.request.urlopen(req) as r:
    print(f"good client with 100 slow clients connected: HTTP {r.status} in {time.time()-t0:.3f}s")
for t in threads: t.join()
print("slow clients with a key:", dict(Counter((s, a) for k, s, a in results if k)))
print("slow clients without a key:", dict(Counter((s, a) for k, s, a in results if not k)))
# second wave, then SIGTERM while they are connected
threads = [threading.Thread(target=slow, args=(i,)) for i in range(100)]
for t in threads: t.start()
time.sleep(2)
t0 = time.time(); os.kill(serve_pid, signal.SIGTERM)
while True:
    try: os.kill(serve_pid, 0); time.sleep(0.02)
    except OSError: break
print(f"SIGTERM with 100 slow clients connected: exited in {time.time()-t0:.2f}s (shutdown timeout 30s)")
