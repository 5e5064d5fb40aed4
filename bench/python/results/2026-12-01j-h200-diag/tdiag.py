"""lead's diagnostic: torch ops per mode, with the speed probe."""
import json, sys, timeit
sys.path.insert(0, "bench/lib")
from speedprobe import probe_ns
import torch
x = torch.ones(16, device="cuda")
lin = torch.nn.Linear(64, 64, device="cuda")
xi = torch.ones(8, 64, device="cuda")
def relu_wrap(t):
    return torch.relu(t)
g = {"x": x, "torch": torch, "lin": lin, "xi": xi, "relu_wrap": relu_wrap}
stmts = {"add_": "x.add_(1)", "empty": "torch.empty(10, device='cuda')", "linear": "lin(xi)",
         "relu_wrap": "relu_wrap(x)"}
for s in stmts.values():
    timeit.timeit(s, globals=g, number=3000)
torch.cuda.synchronize()
out = {"probe": [], "us": {k: [] for k in stmts}}
for rep in range(4):
    out["probe"].append(probe_ns())
    for k, s in stmts.items():
        out["us"][k].append(timeit.timeit(s, globals=g, number=5000) / 5000 * 1e6)
        torch.cuda.synchronize()
out["probe"].append(probe_ns())
print(json.dumps(out))
