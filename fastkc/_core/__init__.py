"""Compiled core: Cython bridges over the C kernels in csrc/."""
