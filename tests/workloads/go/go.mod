module goworkload

go 1.19
