"""deepum on the GPU: what `deepum.enable()` runs. session (enable, disable, stats, the engine),
limits (settings, capacity and fuse), allocator (managed memory under a PyTorch MemPool), advice
(mode advise), the CUDA driver calls (gpu), the native build (native_build) and the recording of
traces (recorder, record_script, fault_attribution). torch and the CUDA bindings load only inside
the functions that need them."""
