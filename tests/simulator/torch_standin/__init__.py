"""gpu-fleet simulator stand-in of torch (TEST ONLY, not PyTorch): version facts only."""
raise ImportError("torch here is the gpu-fleet simulator's stand-in (tests/simulator/torch_standin): "
                  "it carries version facts only and cannot be imported as torch")
