"""Builds the CPU native core (correlation tables, predictor, UVM driver model); needs only a C++17 compiler."""
from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

native = Pybind11Extension(
    "deepum._native",
    ["driver_hooks/module.cpp", "driver_hooks/correlation_bindings.cpp", "driver_hooks/uvm_model_bindings.cpp"],
    include_dirs=["driver_hooks"],
    cxx_std=17,
    extra_compile_args=["-O3"],
)
setup(ext_modules=[native], cmdclass={"build_ext": build_ext})
