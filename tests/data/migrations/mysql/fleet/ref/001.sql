create database if not exists {schema};
