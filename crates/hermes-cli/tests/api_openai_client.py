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

    # Tools the client defines: the API server as a drop-in tool-calling model, driven by the
    # SDK's documented function-calling loop (the assistant message object appended as is).
    tools = [{
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }]
    messages = [{"role": "user", "content": "weather in Paris?"}]
    first = client.chat.completions.create(model="hermes-agent", messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    args = json.loads(call.function.arguments)
    messages.append(first.choices[0].message)
    messages.append({
        "role": "tool",
        "tool_call_id": call.id,
        "content": json.dumps({"city": args["city"], "sky": "sunny"}),
    })
    second = client.chat.completions.create(model="hermes-agent", messages=messages, tools=tools)
    emit(
        "client_tools",
        finish=[first.choices[0].finish_reason, second.choices[0].finish_reason],
        name=call.function.name,
        arguments=args,
        answer=second.choices[0].message.content,
    )

    # The same call streamed: tool-call deltas accumulated by index, as the SDK docs do.
    stream = client.chat.completions.create(
        model="hermes-agent",
        messages=[{"role": "user", "content": "weather in Paris?"}],
        tools=tools,
        stream=True,
    )
    calls, finish = {}, None
    for chunk in stream:
        if not chunk.choices:
            continue
        for tc in chunk.choices[0].delta.tool_calls or []:
            entry = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            entry["id"] = tc.id or entry["id"]
            if tc.function:
                entry["name"] += tc.function.name or ""
                entry["arguments"] += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    emit("client_tools_stream", finish=finish, calls=list(calls.values()))

    # Responses: a function_call output item, answered with function_call_output.
    rtools = [{"type": "function", **tools[0]["function"]}]
    r = client.responses.create(model="hermes-agent", input="weather in Paris?", tools=rtools)
    fc = [item for item in r.output if item.type == "function_call"][0]
    r2 = client.responses.create(
        model="hermes-agent",
        previous_response_id=r.id,
        input=[{
            "type": "function_call_output",
            "call_id": fc.call_id,
            "output": json.dumps({"sky": "sunny"}),
        }],
        tools=rtools,
    )
    emit(
        "responses_tools",
        name=fc.name,
        arguments=json.loads(fc.arguments),
        answer=r2.output_text,
        status=r2.status,
    )

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
