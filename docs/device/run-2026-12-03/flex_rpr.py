# worker:flex-attention with cuBLAS's bf16 reduced-precision reductions switched off, to test
# whether the eager dQ finding (bf16-swa-causal-tl-64-bwd, ratio 1.44) comes from them.
import sys, torch
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
from attnfuzz_worker.examples import flex_attention
flex_attention.main(sys.argv[1:])
