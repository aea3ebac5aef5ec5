// compile

package main
