"""llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`),
with llama.cpp's extra weight-buffer types (repacked / AMX) off unless
LOCAL_MODEL_EXTRA_BUFTS=1: on an AMX-capable CPU the AMX buffer type crashed
the server on its first completion (a general protection fault in
ggml_backend_amx_mul_mat, seen 2026-12-02), and plain buffers give the same
model on every host. Started by scripts/local-model; arguments pass through.
"""
import os
import runpy
import sys

import llama_cpp.llama_cpp as l

if os.environ.get("LOCAL_MODEL_EXTRA_BUFTS") != "1":
    _default = l.llama_model_default_params

    def _params():
        p = _default()
        p.use_extra_bufts = False
        return p

    l.llama_model_default_params = _params

sys.argv = ["llama_cpp.server"] + sys.argv[1:]
runpy.run_module("llama_cpp.server", run_name="__main__")
