module gocgoworkload

go 1.19
