# gpu-fleet simulator stand-in of torch/version.py (TEST ONLY, not PyTorch): the real torch 2.4.0
# CUDA 12.1 wheel assigns these the same way (torch/version.py: __version__, cuda).
from typing import Optional

__all__ = ['__version__', 'cuda']
__version__ = '2.4.0+gpusim'
cuda: Optional[str] = '12.1'
