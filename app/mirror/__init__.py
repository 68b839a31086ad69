"""The desktop mirror window (`window`): the 3D scene as numpy geometry (`scene`), what it draws
read from the loop (`view`), label placement (`labels`), and the Dear ImGui layer (`ui`, `panels`)."""
