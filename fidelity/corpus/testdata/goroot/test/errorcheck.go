// errorcheck

package main
