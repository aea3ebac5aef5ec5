package cli

import (
	"testing"

	"github.com/sirupsen/logrus"
)

func TestCellLogFormatter(t *testing.T) {
	e := logrus.NewEntry(logrus.New()).WithFields(logrus.Fields{"tracker": "tensorboard", "key": "hist"})
	e.Level = logrus.WarnLevel
	e.Message = `not logging "hist": unsupported type []int`
	b, err := cellLogFormatter{}.Format(e)
	if err != nil {
		t.Fatal(err)
	}
	want := "warning: not logging \"hist\": unsupported type []int (key=hist, tracker=tensorboard)\n"
	if string(b) != want {
		t.Fatalf("got %q, want %q", b, want)
	}
}
