"""Added latency of `pgw serve` over a direct call to the simulator (issue 25 benchmark).

Usage: python3 tools/serve/bench.py SIM_ADDR SERVE_ADDR TOKEN [RATE ...]
Open-loop load at each RATE (requests per second) for DURATION_S seconds, first straight to the
simulator (`POST /v1/chat/completions`, non-stream), then through `pgw serve` (same body, model
`llm`); prints p50/p99 per run and the added latency. Plain asyncio + raw HTTP/1.1 keep-alive, no
third-party package. The load generator shares the machine's cores with both servers: read the
numbers as an upper bound of the added latency.
"""

import asyncio
import json
import os
import sys
import time

DURATION_S = float(os.environ.get("DURATION_S", "5"))
POOL = int(os.environ.get("POOL", "64"))


async def one(conn, raw):
    reader, writer = conn
    writer.write(raw)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    if length:
        await reader.readexactly(length)
    elif b"chunked" in head.lower():
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return status


async def run(addr, path, body, token, rate):
    host, port = addr.rsplit(":", 1)
    payload = json.dumps(body).encode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    raw = (
        f"POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{auth}"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode() + payload
    pool = asyncio.Queue()
    for _ in range(POOL):
        pool.put_nowait(await asyncio.open_connection(host, int(port)))
    latencies, errors = [], 0

    async def fire():
        nonlocal errors
        conn = await pool.get()
        t0 = time.perf_counter()
        try:
            status = await one(conn, raw)
            if status != 200:
                errors += 1
            latencies.append((time.perf_counter() - t0) * 1e3)
        except Exception:
            errors += 1
            conn = await asyncio.open_connection(host, int(port))
        pool.put_nowait(conn)

    n = int(rate * DURATION_S)
    start = time.perf_counter()
    tasks = []
    for i in range(n):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(fire()))
    await asyncio.gather(*tasks)
    achieved = n / (time.perf_counter() - start)
    latencies.sort()
    pct = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else float("nan")
    return pct(0.50), pct(0.99), achieved, errors


async def main():
    sim, serve, token = sys.argv[1:4]
    rates = [float(r) for r in sys.argv[4:]] or [100.0, 1000.0]
    messages = [{"role": "user", "content": "hi"}]
    print("| rate (rps) | direct p50 ms | direct p99 ms | serve p50 ms | serve p99 ms | added p50 ms | added p99 ms | achieved rps (direct / serve) | errors |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for rate in rates:
        d = await run(sim, "/v1/chat/completions", {"model": "m", "messages": messages}, None, rate)
        s = await run(serve, "/v1/chat/completions", {"model": "llm", "messages": messages}, token, rate)
        print(f"| {rate:.0f} | {d[0]:.3f} | {d[1]:.3f} | {s[0]:.3f} | {s[1]:.3f} | {s[0]-d[0]:.3f} | {s[1]-d[1]:.3f} | {d[2]:.0f} / {s[2]:.0f} | {d[3]} / {s[3]} |")


asyncio.run(main())
