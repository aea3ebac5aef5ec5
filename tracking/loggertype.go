package tracking

// LoggerType names a built-in tracker, as Accelerate's LoggerType does.
type LoggerType string

// The LoggerType names goaccel knows (Accelerate's minus trackio and
// swanlab, which have no Go backend).
const (
	All         LoggerType = "all"
	Aim         LoggerType = "aim"
	TensorBoard LoggerType = "tensorboard"
	WandB       LoggerType = "wandb"
	CometML     LoggerType = "comet_ml"
	MLflow      LoggerType = "mlflow"
	ClearML     LoggerType = "clearml"
	DVCLive     LoggerType = "dvclive"
)

// LiveChart is the name of the in-notebook chart tracker. It is not a
// LoggerType: "all" does not include it; the kernel's Accelerator adds it.
const LiveChart = "livechart"

// loggerTypes is LoggerType.list() in Accelerate's order.
var loggerTypes = []LoggerType{All, Aim, TensorBoard, WandB, CometML, MLflow, ClearML, DVCLive}

// LoggerTypes returns every LoggerType name, "all" first, in Accelerate's order.
func LoggerTypes() []LoggerType { return append([]LoggerType(nil), loggerTypes...) }

func (l LoggerType) String() string { return string(l) }

func isLoggerType(name string) bool {
	for _, l := range loggerTypes {
		if string(l) == name {
			return true
		}
	}
	return false
}
