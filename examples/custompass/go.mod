module example.com/custompass

go 1.26

require (
	github.com/strata-ir/strata v0.0.0
	pgregory.net/rapid v1.3.0
)

replace github.com/strata-ir/strata => ../..
