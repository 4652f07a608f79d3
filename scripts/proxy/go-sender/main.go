// A backend's FCM send using only Go's standard library (net/http), as the Go, Java and Node Admin SDKs use their
// runtime's HTTP stack: it posts to https://fcm.googleapis.com and knows nothing of the relay. Run with HTTPS_PROXY
// set to the relay's proxy_url and SSL_CERT_FILE to the relay's CA (what Go's net/http and crypto/x509 read), it
// reaches the relay unchanged.
//
//	go run main.go PROJECT TOKEN
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go-sender PROJECT TOKEN")
		os.Exit(64)
	}
	// "from" is a reserved data key: FCM refuses it, and so must the relay. Then a valid send.
	for _, data := range []map[string]string{{"from": "go"}, {"sender": "go"}} {
		body, _ := json.Marshal(map[string]any{"message": map[string]any{"token": os.Args[2], "data": data}})
		response, err := http.Post("https://fcm.googleapis.com/v1/projects/"+os.Args[1]+"/messages:send", "application/json", bytes.NewReader(body))
		if err != nil {
			fmt.Fprintln(os.Stderr, "send failed:", err)
			os.Exit(1)
		}
		answer, _ := io.ReadAll(response.Body)
		response.Body.Close()
		fmt.Printf("%d %s %s\n", response.StatusCode, response.Proto, bytes.TrimSpace(answer))
	}
}
