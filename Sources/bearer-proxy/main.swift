// The bearer-proxy executable: see Sources/BearerProxy.
print("bearer-proxy")
