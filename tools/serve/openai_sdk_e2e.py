"""End-to-end check of `pgw serve` with the official OpenAI Python SDK (README D33).

Run by tools/serve/openai_sdk_e2e.sh, which starts `pgw sim` and `pgw serve` and exports
PGW_E2E_BASE_URL (…/v1) and PGW_E2E_TOKEN. Stream and non-stream chat.completions.create and
embeddings.create must work unchanged; the retry fixture makes the first upstream answer a 503,
which the SDK must never see.
"""

import os
import struct
import sys

from openai import OpenAI

base_url = os.environ["PGW_E2E_BASE_URL"]
token = os.environ["PGW_E2E_TOKEN"]
# max_retries=0: a 5xx must not be hidden by the SDK's own retries.
client = OpenAI(base_url=base_url, api_key=token, max_retries=0)

messages = [{"role": "user", "content": "hi there"}]

# Non-stream (the first upstream attempt fails with 503; the gateway retries, invisibly).
completion = client.chat.completions.create(model="llm", messages=messages)
assert completion.object == "chat.completion", completion
assert completion.choices[0].message.content == "second time lucky", completion
assert completion.choices[0].finish_reason == "stop", completion
assert completion.usage is not None and completion.usage.total_tokens > 0, completion

# Stream with usage.
parts = []
usage = None
chunks = 0
stream = client.chat.completions.create(
    model="llm", messages=messages, stream=True, stream_options={"include_usage": True}
)
for chunk in stream:
    chunks += 1
    if chunk.usage is not None:
        usage = chunk.usage
    for choice in chunk.choices:
        if choice.delta.content:
            parts.append(choice.delta.content)
assert "".join(parts) == "second time lucky", parts
assert usage is not None and usage.prompt_tokens > 0, usage
assert chunks >= 3, chunks

# A hedged call (the first leg stalls, the hedge leg wins), non-stream then stream: invisible.
hedged = client.chat.completions.create(model="hedged", messages=messages)
assert hedged.choices[0].message.content == "hedge leg wins", hedged
parts = []
roles = 0
for chunk in client.chat.completions.create(model="hedged", messages=messages, stream=True):
    for choice in chunk.choices:
        if choice.delta.role:
            roles += 1
        if choice.delta.content:
            parts.append(choice.delta.content)
assert "".join(parts) == "hedge leg wins" and roles == 1, (parts, roles)

# A stream that fails after its first token: the SDK raises APIError mid-stream, after the
# partial content, and the call is never retried.
import openai

parts = []
try:
    for chunk in client.chat.completions.create(model="broken", messages=messages, stream=True):
        for choice in chunk.choices:
            if choice.delta.content:
                parts.append(choice.delta.content)
    raise SystemExit("a committed failure was not raised")
except openai.APIError as e:
    assert type(e) is openai.APIError, repr(e)
    assert "".join(parts) == "partial answer", parts
    assert isinstance(e.body, dict) and e.body.get("committed") is True, e.body
    assert e.type, e.body

# Embeddings (the SDK asks for base64 by default and decodes it).
emb = client.embeddings.create(model="embed", input=["a", "bb"])
assert len(emb.data) == 2, emb
assert len(emb.data[0].embedding) == 4, emb
floats = client.embeddings.create(model="embed", input=["a", "bb"], encoding_format="float")


def as_f32(values):
    """Each value narrowed to the f32 it denotes (the float form is each f32's shortest text,
    the base64 form its exact bytes: the same f32s either way)."""
    return [struct.unpack("<f", struct.pack("<f", x))[0] for x in values]


assert [as_f32(d.embedding) for d in floats.data] == [as_f32(d.embedding) for d in emb.data], (
    floats,
    emb,
)

# Models and errors surface as the SDK's typed exceptions.
ids = sorted(m.id for m in client.models.list())
assert ids == ["broken", "embed", "hedged", "llm"], ids
try:
    OpenAI(base_url=base_url, api_key="tok-wrong-0123456789", max_retries=0).chat.completions.create(
        model="llm", messages=messages
    )
    raise SystemExit("a wrong key was accepted")
except Exception as e:  # openai.AuthenticationError
    assert type(e).__name__ == "AuthenticationError", repr(e)
try:
    client.chat.completions.create(model="nope", messages=messages)
    raise SystemExit("an unknown model was accepted")
except Exception as e:  # openai.NotFoundError
    assert type(e).__name__ == "NotFoundError", repr(e)

print("openai SDK e2e: ok (chat non-stream, chat stream with usage, retried and hedged calls, committed stream failure, embeddings, models, errors)")
sys.exit(0)
