# A program's own sitecustomize: cuprof's bootstrap must still run it.
import builtins
import sys

builtins.USER_SITECUSTOMIZE_RAN = True
print("user sitecustomize ran", file=sys.stderr)
