// BearerMocks
