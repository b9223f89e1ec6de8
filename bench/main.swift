print("bearer-bench")
