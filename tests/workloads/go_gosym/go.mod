module gosymoracle

go 1.19
