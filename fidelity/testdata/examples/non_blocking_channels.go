// Non-blocking sends and receives with select and default.
package main

import "fmt"

func main() {
	messages := make(chan string)
	signals := make(chan bool)

	select {
	case m := <-messages:
		fmt.Println("received", m)
	default:
		fmt.Println("nothing to receive")
	}

	select {
	case messages <- "hi":
		fmt.Println("sent hi")
	default:
		fmt.Println("nobody listening; hi not sent")
	}

	mailbox := make(chan string, 1)
	for _, m := range []string{"first", "second"} {
		select {
		case mailbox <- m:
			fmt.Println("queued", m)
		default:
			fmt.Println("mailbox full, dropped", m)
		}
	}

	select {
	case m := <-messages:
		fmt.Println("received", m)
	case s := <-signals:
		fmt.Println("signal", s)
	default:
		fmt.Println("no activity")
	}
}
