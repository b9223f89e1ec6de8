// BearerProxy
