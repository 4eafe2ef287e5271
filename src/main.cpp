#include "app.hpp"

int main(int argc, char** argv) { return bufferlock::app_main(argc, argv); }
