// BearerHTTP
