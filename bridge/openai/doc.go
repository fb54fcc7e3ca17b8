// Package openai is the harness for any OpenAI-compatible Chat Completions
// endpoint (Ollama, llama.cpp's llama-server, vLLM, LM Studio): Wheelhouse's
// own agent loop with file tools confined to the agent's directory, side
// effects behind the bridge's gate, and a steer between every model call. It
// imports bridge, wire and authz's neighbours only through bridge; never hub,
// web, room or another harness.
package openai
