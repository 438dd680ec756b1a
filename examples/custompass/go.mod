module example.com/custompass

go 1.26

require (
	github.com/strata-ir/strata v0.0.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
)

replace github.com/strata-ir/strata => ../..
