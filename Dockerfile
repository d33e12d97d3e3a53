# Builds the record example as a container image (run from the repository root):
#   docker build -t krply-record:dev -f examples/record/Dockerfile .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /record ./examples/record

FROM gcr.io/distroless/static:nonroot
COPY --from=build /record /record
ENTRYPOINT ["/record"]
