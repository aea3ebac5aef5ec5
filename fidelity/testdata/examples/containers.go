// container/heap as a priority queue and container/list as a queue.
package main

import (
	"container/heap"
	"container/list"
	"fmt"
)

type task struct {
	name     string
	priority int
}

type queue []task

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].priority > q[j].priority }
func (q queue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)        { *q = append(*q, x.(task)) }
func (q *queue) Pop() any {
	old := *q
	t := old[len(old)-1]
	*q = old[:len(old)-1]
	return t
}

func main() {
	q := &queue{{"write", 2}, {"test", 5}, {"ship", 1}}
	heap.Init(q)
	heap.Push(q, task{"fix", 9})
	for q.Len() > 0 {
		t := heap.Pop(q).(task)
		fmt.Println(t.priority, t.name)
	}

	l := list.New()
	l.PushBack("b")
	l.PushFront("a")
	l.PushBack("c")
	for e := l.Front(); e != nil; e = e.Next() {
		fmt.Print(e.Value, " ")
	}
	fmt.Println(l.Len())
}
