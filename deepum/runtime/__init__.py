"""deepum on the GPU: what `deepum.enable()` runs. session (enable, disable, stats, the engine),
limits (settings, capacity and fuse, the opt-in past GPU memory and its guard), host_memory (what
the host can back), allocator (managed memory under a PyTorch MemPool), advice (mode advise), the
CUDA driver calls (gpu), the native build (native_build), the recording of traces (recorder,
record_script, fault_attribution) and `deepum run` (launcher). torch and the CUDA bindings load only inside
the functions that need them."""
