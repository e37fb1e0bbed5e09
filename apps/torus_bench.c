/* torus-bench: being written */
int main(void) { return 2; }
