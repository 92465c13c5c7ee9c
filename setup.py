"""Builds the CPU native core (correlation tables, predictor, UVM driver model; needs only a C++17
compiler) and ships the GPU runtime's native sources inside the package (deepum/native_src), which
deepum.runtime.native_build compiles on first use on a machine with CUDA."""
import glob
import shutil
from pathlib import Path

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py

NATIVE_SOURCES = ("driver_hooks", "kernels")

# The extension's sources compile in parallel, one job per CPU (NPY_NUM_BUILD_JOBS sets another count);
# each build recompiles every source, since a header change must reach every file that includes it.
ParallelCompile("NPY_NUM_BUILD_JOBS").install()

native = Pybind11Extension(
    "deepum._native",
    ["driver_hooks/module.cpp", "driver_hooks/correlation_bindings.cpp", "driver_hooks/uvm_model_bindings.cpp",
     "driver_hooks/policy_bindings.cpp",
     "driver_hooks/memory_map_bindings.cpp",
     "driver_hooks/next_use_bindings.cpp",
     "driver_hooks/schedule_bindings.cpp",
     "driver_hooks/iteration_bins_bindings.cpp",
     "driver_hooks/tensor_lists_bindings.cpp"],
    include_dirs=["driver_hooks"],
    depends=sorted(glob.glob("driver_hooks/*.hpp")),
    cxx_std=17,
    extra_compile_args=["-O3"],
)


class BuildPyWithNativeSources(build_py):
    """Copies driver_hooks/ and kernels/ into the built package as deepum/native_src/."""

    def run(self):
        super().run()
        for folder in NATIVE_SOURCES:
            target = Path(self.build_lib) / "deepum" / "native_src" / folder
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(folder, target)


setup(ext_modules=[native], cmdclass={"build_ext": build_ext, "build_py": BuildPyWithNativeSources})
