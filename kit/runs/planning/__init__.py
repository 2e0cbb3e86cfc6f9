"""Planning: the pairs of run specs that isolate each factor, and what this machine can plan."""
