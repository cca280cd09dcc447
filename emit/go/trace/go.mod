module lockstep/emit/go/trace

go 1.21
