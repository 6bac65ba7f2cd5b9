"""The official `openai` SDK as a client of `hermes gateway` (run by api_openai_sdk.rs).

Usage: api_openai_client.py BASE_URL KEY
Prints one JSON object per line: {"step": NAME, ...}. Every call is the SDK's documented usage.
"""

import json
import sys

import openai
from openai import OpenAI


def emit(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


def main():
    base_url, key = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=60)

    # The streaming loop exactly as the SDK's README writes it, across a turn that runs a tool.
    stream = client.chat.completions.create(
        model="hermes-agent",
        messages=[{"role": "user", "content": "run the tool"}],
        stream=True,
    )
    printed = []
    for chunk in stream:
        printed.append(chunk.choices[0].delta.content or "")
    emit("readme_stream", text="".join(printed))

    # Chat completions, not streamed, with a client system message.
    completion = client.chat.completions.create(
        model="hermes-agent",
        messages=[
            {"role": "system", "content": "Answer like a pirate."},
            {"role": "user", "content": "plain question"},
        ],
    )
    emit(
        "chat",
        content=completion.choices[0].message.content,
        finish_reason=completion.choices[0].finish_reason,
        object=completion.object,
        total_tokens=completion.usage.total_tokens,
    )

    # Responses, chained through previous_response_id across three turns.
    r1 = client.responses.create(model="hermes-agent", input="first turn", instructions="Be terse.")
    r2 = client.responses.create(model="hermes-agent", input="second turn", previous_response_id=r1.id)
    r3 = client.responses.create(model="hermes-agent", input="third turn", previous_response_id=r2.id)
    emit(
        "responses",
        texts=[r1.output_text, r2.output_text, r3.output_text],
        ids=[r1.id, r2.id, r3.id],
        previous=[r2.previous_response_id, r3.previous_response_id],
        status=r3.status,
    )
    fetched = client.responses.retrieve(r3.id)
    emit("retrieve", id=fetched.id, text=fetched.output_text)

    # Responses, streamed: the SDK's typed events.
    events = client.responses.create(model="hermes-agent", input="stream me", stream=True)
    kinds, deltas, final = [], [], None
    for event in events:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        if event.type == "response.completed":
            final = event.response.output_text
    emit("responses_stream", kinds=kinds, text="".join(deltas), final=final)

    # A wrong key.
    wrong = OpenAI(base_url=base_url, api_key="not-the-key", max_retries=0, timeout=60)
    try:
        wrong.chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": "hi"}]
        )
        emit("wrong_key", raised=None)
    except openai.AuthenticationError as e:
        emit("wrong_key", raised="AuthenticationError", status=e.status_code, code=e.code)


if __name__ == "__main__":
    main()
