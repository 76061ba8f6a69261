module gosymbols

go 1.19
