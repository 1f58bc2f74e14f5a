module perfsleuth/extract-python

go 1.22

require github.com/kluctl/go-embed-python v0.0.0-3.10.16-20241219-1

require (
	github.com/gofrs/flock v0.12.1 // indirect
	github.com/sirupsen/logrus v1.9.3 // indirect
	golang.org/x/sync v0.10.0 // indirect
	golang.org/x/sys v0.28.0 // indirect
)
