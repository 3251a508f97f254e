"""fp8rl Python bindings (the idiomatic layer comes later; the raw ctypes layer is fp8rl._raw)."""
