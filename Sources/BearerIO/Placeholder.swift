// BearerIO
