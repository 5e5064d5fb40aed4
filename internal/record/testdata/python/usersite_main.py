import builtins

import cuda

print("marker:", getattr(builtins, "USER_SITECUSTOMIZE_RAN", False))
cuda.init()
cuda.create_stream().close()
