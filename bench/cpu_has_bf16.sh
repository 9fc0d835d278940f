#!/bin/sh
# Exit status 0 when this CPU has bf16 instructions (AVX512-BF16 or AMX),
# the ones PyTorch's bf16 autocast needs for its fast path; elsewhere its
# bf16 step takes minutes and fp32 is its best setting. Used by
# compare_bert.sh and compare_squad.sh to choose PyTorch's precision.
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo 2>/dev/null
