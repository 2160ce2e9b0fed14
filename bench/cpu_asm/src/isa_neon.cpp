// AArch64 NEON table for the _kernels module (the AArch64 build of the package); the same kernels the qemu harness
// (neon_harness.cpp) checks. Descriptor: variants.py ISAS["neon"].
#include "isa.hpp"
#include "isa_neon.hpp"

ISA_TABLE(neon, 16, neon::D, neon::S, neon::I, neon::X, neon::G_FP, neon::A_FP, neon::G_INT, neon::A_INT, neon::G_LD,
          neon::A_LD, neon::G_ST, (&kern::int_chains<neon::I, neon::G_INT, neon::A_INT, true>))
